"""One adapter per framework, all of one shape (``failsecure.adapter.Adapter``), and the
one table that describes them (``ADAPTERS``).

Each entry is the adapter's metadata and the single source for everything that names it:
the drop-in bootstrap watches ``trigger`` without importing anything else; activation
builds ``target`` (and refuses the framework by name when it cannot even load); the
adapter class reads its ``distribution``, ``supported`` range and ``tested`` releases from
here; ``tools/generate.py`` writes the tox envs, the README's table, the benchmark list
and the docs navigation from it (``tox -e generated`` fails when one drifted). Adding an
adapter: one module here, one entry below, one ``tests/adapters/<tests>`` folder, one
``docs/frameworks/<docs>`` page (docs/adapters.md).

This module is imported at interpreter start: it imports nothing.
"""


class Meta:
    """One adapter's metadata (see the module docstring)."""

    __slots__ = ("name", "title", "trigger", "target", "distribution", "supported", "releases", "env", "tests",
                 "docs", "how", "set_env", "bench", "bench_set_env", "settings")

    def __init__(self, name, *, title, trigger, target, distribution, supported, releases, env, tests, docs, how,
                 set_env=(), bench=None, bench_set_env=(), settings=None):
        #: the adapter's name: ``activation.get(name)``, the audit's ``framework``, hook-id prefix
        self.name = name
        #: how the docs and the README name the framework
        self.title = title
        #: the module whose import activates the adapter
        self.trigger = trigger
        #: ``"module:Class"`` of the adapter
        self.target = target
        #: the PyPI distribution whose version decides (supported, untested, refused)
        self.distribution = distribution
        #: PEP 440 range of the releases the adapter supports
        self.supported = supported
        #: pinned release -> its pip requirements: one tox env ``<env>-<release>`` each,
        #: newest first (the benchmark runs against the first)
        self.releases = releases
        #: the tox env prefix, the tests folder (under tests/adapters/) and the docs page
        #: (under docs/frameworks/, without .md)
        self.env, self.tests, self.docs = env, tests, docs
        #: the README's "how" column
        self.how = how
        #: extra ``set_env`` lines of its test envs and of its benchmark env
        self.set_env, self.bench_set_env = tuple(set_env), tuple(bench_set_env)
        #: its benchmark script under benchmarks/ (None: no benchmark)
        self.bench = bench
        #: its own config settings (``[frameworks."<name>"]``, read with
        #: ``Adapter.setting``): setting -> the values it may take, the loosest first; the
        #: first is the default, and a project file may only move one to a later value
        self.settings = dict(settings or {})

    @property
    def tested(self) -> tuple:
        """The versions of ``distribution`` its pinned releases install, oldest first."""
        prefix = self.distribution + "=="
        pins = [req[len(prefix):] for reqs in self.releases.values() for req in reqs if req.startswith(prefix)]
        return tuple(sorted(pins, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split("."))))

    def __repr__(self) -> str:
        return f"Meta({self.name!r})"


_NO_CREWAI_TELEMETRY = ("CREWAI_DISABLE_TELEMETRY = true", "CREWAI_DISABLE_TRACKING = true", "OTEL_SDK_DISABLED = true")
_NO_AWS = ("AWS_EC2_METADATA_DISABLED = true", "OTEL_SDK_DISABLED = true")

ADAPTERS = {meta.name: meta for meta in (
    Meta("hermes-agent", title="hermes-agent", trigger="hermes_cli.plugins",
         target="failsecure.adapters.hermes:HermesAdapter", distribution="hermes-agent", supported=">=0.13.0,<=0.19.0",
         releases={"0.19.0": ("hermes-agent==0.19.0",), "0.18.1": ("hermes-agent==0.18.1",),
                   "0.13.0": ("hermes-agent==0.13.0",)},
         env="hermes", tests="hermes_agent", docs="hermes-agent", bench="bench_hermes.py",
         how="patches `hermes_cli.plugins` (Python plugins and shell hooks)"),
    Meta("code-puppy", title="code-puppy", trigger="code_puppy.callbacks",
         target="failsecure.adapters.codepuppy:CodePuppyAdapter", distribution="code-puppy",
         supported=">=0.0.733,<=0.0.946",
         releases={"0.0.946": ("code-puppy==0.0.946", "code-puppy-core-plugins==0.0.100"),
                   "0.0.808": ("code-puppy==0.0.808", "code-puppy-core-plugins==0.0.61"),
                   "0.0.733": ("code-puppy==0.0.733", "code-puppy-core-plugins==0.0.45")},
         env="code-puppy", tests="code_puppy", docs="code-puppy", bench="bench_codepuppy.py",
         how="patches `code_puppy.callbacks` gating phases and the command hooks of `code_puppy.hook_engine`"),
    Meta("crewai", title="CrewAI", trigger="crewai.hooks.tool_hooks",
         target="failsecure.adapters.crewai:CrewAIAdapter", distribution="crewai", supported=">=1.15.12,<=1.15.30",
         releases={"1.15.30": ("crewai==1.15.30",), "1.15.12": ("crewai==1.15.12",)},
         env="crewai", tests="crewai", docs="crewai", bench="bench_crewai.py", set_env=_NO_CREWAI_TELEMETRY,
         how="before-tool-call hooks (`crewai.hooks`): raise, hang, junk deny; the gates judge the final `tool_input`"),
    Meta("langchain", title="LangChain / LangGraph", trigger="langchain_core.callbacks.manager",
         target="failsecure.adapters.langchain:LangChainAdapter", distribution="langchain-core", supported=">=1.6,<1.9",
         releases={"1.5.2": ("langchain==1.5.2", "langchain-core==1.8.3", "langgraph==1.2.24", "langgraph-prebuilt==1.1.3"),
                   "1.3.18": ("langchain==1.3.18", "langchain-core==1.6.13", "langgraph==1.2.11")},
         env="langchain", tests="langchain", docs="langchain", bench="bench_langchain.py",
         how="strict (`raise_error`) callback handlers are gates, HITL `when` predicates, `wrap_tool_call` deadlines"),
    Meta("claude-agent-sdk", title="claude-agent-sdk", trigger="claude_agent_sdk._internal.query",
         target="failsecure.adapters.claude_sdk:ClaudeSDKAdapter", distribution="claude-agent-sdk",
         supported=">=0.2.150,<=0.2.189",
         releases={"0.2.189": ("claude-agent-sdk==0.2.189",), "0.2.150": ("claude-agent-sdk==0.2.150",)},
         env="claude-sdk", tests="claude_sdk", docs="claude-agent-sdk", bench="bench_claude_sdk.py",
         how="Python `PreToolUse` and `PermissionRequest` hook callbacks and `can_use_tool` answer an explicit deny on every failure"),
    Meta("strands", title="Strands Agents", trigger="strands.hooks",
         target="failsecure.adapters.strands:StrandsAdapter", distribution="strands-agents", supported=">=1.52.0,<=1.62.0",
         releases={"1.62.0": ("strands-agents==1.62.0",), "1.52.0": ("strands-agents==1.52.0",)},
         env="strands", tests="strands", docs="strands", bench="bench_strands.py",
         set_env=("AWS_EC2_METADATA_DISABLED = true", "AWS_ACCESS_KEY_ID = failsecure-test",
                  "AWS_SECRET_ACCESS_KEY = failsecure-test", "AWS_DEFAULT_REGION = us-east-1", "OTEL_SDK_DISABLED = true"),
         bench_set_env=_NO_AWS,
         how="`BeforeToolCallEvent` callbacks and intervention handlers: a cancel sticks, junk and hangs deny, the final tool use is judged"),
    Meta("openai-agents", title="OpenAI Agents SDK", trigger="agents.run_internal.tool_execution",
         target="failsecure.adapters.openai_agents:OpenAIAgentsAdapter", distribution="openai-agents",
         supported=">=0.20.0,<0.25",
         releases={"0.24.0": ("openai-agents==0.24.0",), "0.20.0": ("openai-agents==0.20.0",)},
         env="openai-agents", tests="openai_agents", docs="openai-agents", bench="bench_openai_agents.py",
         set_env=("OPENAI_AGENTS_DISABLE_TRACING = 1", "OPENAI_API_KEY = sk-dummy-not-used"),
         settings={"failure_behavior": ("reject_content", "raise_exception")},
         how="tool input guardrails, `needs_approval`, MCP `require_approval` and the approval and safety-check callbacks"),
    Meta("google-adk", title="Google ADK", trigger="google.adk.plugins.plugin_manager",
         target="failsecure.adapters.adk:ADKAdapter", distribution="google-adk", supported=">=2.7.1,<=2.13.0",
         releases={"2.13.0": ("google-adk==2.13.0",), "2.7.1": ("google-adk==2.7.1",)},
         env="adk", tests="adk", docs="google-adk", bench="bench_adk.py",
         how="agent and plugin `before_tool_callback`s and `require_confirmation`: deadlines, junk denies, the final arguments are judged"),
    Meta("pydantic-ai", title="pydantic-ai", trigger="pydantic_ai.capabilities.hooks",
         target="failsecure.adapters.pydantic_ai:PydanticAIAdapter", distribution="pydantic-ai-slim",
         supported=">=2.42.0,<=2.68.0",
         # the MCP client and SDK for MCPToolset's tests (an in-process server): fastmcp 4 on mcp 2;
         # 2.42.0 imports legacy httpx, which only fastmcp 3 (mcp 1) brings
         releases={"2.68.0": ("pydantic-ai-slim==2.68.0", "fastmcp-slim[client]==4.2.3", "mcp==2.3.0"),
                   "2.42.0": ("pydantic-ai-slim==2.42.0", "fastmcp-slim[client]==3.4.11", "mcp==1.30.0")},
         env="pydantic-ai", tests="pydantic_ai", docs="pydantic-ai", bench="bench_pydantic_ai.py",
         how="`Hooks` and capability before-tool hooks, approval predicates and toolset wrappers: deadlines, junk denies, the final arguments are judged"),
)}

#: adapter name -> (trigger module, "module:Class", distribution): what the bootstrap and
#: activation read
BUILTIN = {name: (meta.trigger, meta.target, meta.distribution) for name, meta in ADAPTERS.items()}
