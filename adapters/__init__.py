"""One adapter per framework, all of one shape (``failsecure.adapter.Adapter``).

``BUILTIN`` maps each adapter to the module whose import activates it (the drop-in
bootstrap watches these names without importing anything else) and to its class.
"""

BUILTIN = {
    "hermes-agent": ("hermes_cli.plugins", "failsecure.adapters.hermes:HermesAdapter"),
    "code-puppy": ("code_puppy.callbacks", "failsecure.adapters.codepuppy:CodePuppyAdapter"),
}
