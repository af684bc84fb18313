"""One adapter per framework, all of one shape (``failsecure.adapter.Adapter``).

``BUILTIN`` maps each adapter to the module whose import activates it (the drop-in
bootstrap watches these names without importing anything else) and to its class.
"""

BUILTIN = {
    "hermes-agent": ("hermes_cli.plugins", "failsecure.adapters.hermes:HermesAdapter"),
    "code-puppy": ("code_puppy.callbacks", "failsecure.adapters.codepuppy:CodePuppyAdapter"),
    "crewai": ("crewai.hooks.tool_hooks", "failsecure.adapters.crewai:CrewAIAdapter"),
    "langchain": ("langchain_core.callbacks.manager", "failsecure.adapters.langchain:LangChainAdapter"),
    "claude-agent-sdk": ("claude_agent_sdk._internal.query", "failsecure.adapters.claude_sdk:ClaudeSDKAdapter"),
    "strands": ("strands.hooks.registry", "failsecure.adapters.strands:StrandsAdapter"),
    "openai-agents": ("agents.run_internal.tool_execution", "failsecure.adapters.openai_agents:OpenAIAgentsAdapter"),
    "google-adk": ("google.adk.plugins.plugin_manager", "failsecure.adapters.adk:ADKAdapter"),
    "pydantic-ai": ("pydantic_ai.capabilities.hooks", "failsecure.adapters.pydantic_ai:PydanticAIAdapter"),
}
