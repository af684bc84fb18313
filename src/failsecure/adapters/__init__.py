"""One adapter per framework, all of one shape (``failsecure.adapter.Adapter``).

``BUILTIN`` maps each adapter to the module whose import activates it (the drop-in
bootstrap watches these names without importing anything else), to its class, and to
the distribution it adapts (so an adapter that cannot even load is still reported, and
its framework refused, by name).
"""

BUILTIN = {
    "hermes-agent": ("hermes_cli.plugins", "failsecure.adapters.hermes:HermesAdapter", "hermes-agent"),
    "code-puppy": ("code_puppy.callbacks", "failsecure.adapters.codepuppy:CodePuppyAdapter", "code-puppy"),
    "crewai": ("crewai.hooks.tool_hooks", "failsecure.adapters.crewai:CrewAIAdapter", "crewai"),
    "langchain": ("langchain_core.callbacks.manager", "failsecure.adapters.langchain:LangChainAdapter", "langchain-core"),
    "claude-agent-sdk": ("claude_agent_sdk._internal.query", "failsecure.adapters.claude_sdk:ClaudeSDKAdapter", "claude-agent-sdk"),
    "strands": ("strands.hooks", "failsecure.adapters.strands:StrandsAdapter", "strands-agents"),
    "openai-agents": ("agents.run_internal.tool_execution", "failsecure.adapters.openai_agents:OpenAIAgentsAdapter", "openai-agents"),
    "google-adk": ("google.adk.plugins.plugin_manager", "failsecure.adapters.adk:ADKAdapter", "google-adk"),
    "pydantic-ai": ("pydantic_ai.capabilities.hooks", "failsecure.adapters.pydantic_ai:PydanticAIAdapter", "pydantic-ai-slim"),
}
