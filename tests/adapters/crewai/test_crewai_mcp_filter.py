"""An MCP server config's callable ``tool_filter`` (``Agent(mcps=[MCPServerStdio(...,
tool_filter=f)])``) decides which of the server's tools the agent is offered, so whether
a model's call to one can run. Upstream (``MCPToolResolver._resolve_native``) lists a
tool on any truthy answer (``"no"`` listed it) and waits for ever on a hanging filter.
Under failsecure only ``True`` lists it; a raise, a hang past its deadline or junk is
audited as its failure and does not list it. A real MCP server over stdio."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from crewai import Agent
from crewai.mcp import MCPServerStdio

from .conftest import ScriptedLLM

SERVER = '''
from mcp.server.fastmcp import FastMCP
app = FastMCP("failsecure-test")

@app.tool()
def marker(command: str) -> str:
    """Runs a command (test)."""
    return "ran"

app.run()
'''


def _listed(rig, tool_filter) -> list:
    script = Path(rig.dir) / "mcp_server.py"
    script.write_text(SERVER)
    agent = Agent(role="r", goal="g", backstory="b", llm=ScriptedLLM({}),
                  mcps=[MCPServerStdio(command=sys.executable, args=[str(script)], tool_filter=tool_filter)])
    return [t.name for t in agent.get_mcp_tools(agent.mcps)]


def junk(context, tool):
    return "no"


def raising(context, tool):
    raise RuntimeError("SECRET-7")


def hanging(context, tool):
    time.sleep(2)
    return True


@pytest.mark.parametrize("fn, failure", [(junk, "invalid"), (raising, "raised"), (hanging, "timeout")])
def test_a_failing_tool_filter_does_not_list_the_tool(rig, fn, failure):
    start = time.monotonic()
    assert _listed(rig, fn) == []
    if fn is hanging:
        assert time.monotonic() - start < 1.9
    events = rig.events()
    assert [(e["outcome"], e["hook"], e["failure"]) for e in events] == [("deny", rig.hook_id(fn), failure)]
    assert "SECRET" not in rig.audit_path.read_text()


def test_a_failing_tool_filter_the_config_tolerates_lists_the_tool(rig):
    rig.config(tables=f'[hooks."{rig.hook_id(junk)}"]\non_error = "allow"\n')
    assert len(_listed(rig, junk)) == 1


def allowing(context, tool):
    return True


def refusing(context, tool):
    return False


def one_argument(tool):
    return tool.get("name") == "marker"


@pytest.mark.parametrize("fn, listed", [(allowing, 1), (refusing, 0), (one_argument, 1)])
def test_a_valid_tool_filter_answer_is_taken_as_upstream(rig, fn, listed):
    """The allow twins: ``True`` lists the tool, ``False`` does not (no failure audited),
    a filter taking only the tool is asked as upstream asks it."""
    names = _listed(rig, fn)
    assert len(names) == listed and all(n.endswith("marker") for n in names)
    assert not [e for e in rig.events() if e.get("failure")]
