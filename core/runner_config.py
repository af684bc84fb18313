"""The runner's config: ``failsecure.policy.load_light()``."""


def load():
    from failsecure import policy

    return policy.load_light()
