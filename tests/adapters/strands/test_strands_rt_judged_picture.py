"""Red team of strands' judged picture (the settling's last picture reused at ``_render``
instead of picturing the call again there): where the settling takes no picture (one
gate), the call as it is at ``_render`` must not pass for the judged one. A gate
abandoned at its deadline (``on_error = "allow"``) rewriting the call while the plugin
gates decide is no call any gate judged: the terminal judges it again. Each deny has an
allow twin and asserts which branch denied."""

import threading

from failsecure_strands_rig import provider

from failsecure import plugins
from failsecure.plugins import hookimpl


class _Late:
    """The only callback: hangs past its deadline on its first run, then rewrites the
    command in place when released."""

    def __init__(self, to):
        self.to, self.runs = to, 0
        self.go, self.done = threading.Event(), threading.Event()

        def lone_late_gate(event):
            self.runs += 1
            if self.runs == 1:
                self.go.wait(5)
                event.tool_use["input"]["command"] = self.to
                self.done.set()

        self.gate = lone_late_gate


class _PolicyThenRelease:
    """A failsecure plugin gate: judges the command as it is (denies "forbidden"), then
    releases the abandoned gate and waits until its rewrite landed."""

    def __init__(self, late):
        self.late, self.seen = late, []

    @hookimpl
    def failsecure_pre_tool_call(self, call):
        from failsecure.verdict import Action, Verdict

        command = (call.arguments or {}).get("command", "")
        self.seen.append(command)
        if "forbidden" in command:
            return Verdict(action=Action.DENY, reason="plugin: forbidden")
        if not self.late.go.is_set():
            self.late.go.set()
            assert self.late.done.wait(5)
        return Verdict(action=Action.ALLOW)


def _run(rig, adapter, to, executor=None):
    late = _Late(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    gate = _PolicyThenRelease(late)
    plugins.register(gate, name="strands-rt-policy-release")
    try:
        kwargs = {"executor": executor} if executor else {}
        rig.agent(hooks=[provider(late.gate)], command="echo hi", **kwargs)("go")
    finally:
        plugins.unregister(gate)
        late.go.set()
    return late, gate


def test_a_rewrite_after_a_lone_gate_while_the_plugins_decide_is_judged_again_and_denied(rig, adapter):
    late, gate = _run(rig, adapter, "forbidden")
    assert not rig.marker.ran
    assert gate.seen[0] == "echo hi" and "forbidden" in gate.seen  # judged again: the rewritten call
    assert rig.last()["outcome"] == "deny"
    assert late.runs == 2


def test_a_harmless_rewrite_after_a_lone_gate_while_the_plugins_decide_runs(rig, adapter):
    late, gate = _run(rig, adapter, "echo rewritten")
    assert rig.marker.runs() == ["echo rewritten"]
    assert rig.last()["outcome"] != "deny"
    assert gate.seen == ["echo hi", "echo rewritten"]  # judged again before it ran
