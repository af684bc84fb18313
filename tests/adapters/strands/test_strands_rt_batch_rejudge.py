"""Red team of strands' batch gate (``BeforeToolsEvent``): what the batch gates judged of
each tool use is carried to its call. A use that reaches its call changed from what they
judged (a batch gate abandoned at its deadline under ``on_error = "allow"`` writing after
the batch's decision; a tool of the batch run before it editing the message) is judged
again by them, in a round of its own, or refused; a per-call callback's own rewrite after
a batch whose gates answered in time is the per-call gates' to judge (upstream's stages).
Each deny has an allow twin and asserts which branch denied."""

import threading

import pytest

from failsecure_strands_rig import batch_provider, provider


def _uses(event):
    return [c["toolUse"] for c in event.message["content"] if "toolUse" in c]


def _rename(to):
    def rewrite(use):
        use["name"] = to

    return rewrite


def _replace_input(to):
    def rewrite(use):
        use["input"] = {"command": to}

    return rewrite


def _edit_in_place(to):
    def rewrite(use):
        use["input"]["command"] = to

    return rewrite


#: (id, the deny rewrite, the allow rewrite, what the allow twin runs)
TARGETS = [
    ("name-swap", _rename("dangerous"), _rename("harmless"), "ls"),
    ("input-replaced", _replace_input("forbidden rm"), _replace_input("ls --dry-run"), "ls --dry-run"),
    ("input-in-place", _edit_in_place("forbidden rm"), _edit_in_place("ls --dry-run"), "ls --dry-run"),
]


class _LateBatch:
    """A BeforeToolsEvent gate that hangs past its deadline on its first run, then,
    released (by a per-call callback), rewrites the tool uses ``which`` picks."""

    def __init__(self, rewrite, which=lambda uses: uses):
        self.rewrite, self.which, self.runs = rewrite, which, 0
        self.go, self.done = threading.Event(), threading.Event()

        def late_batch_gate(event):
            self.runs += 1
            if self.runs == 1:
                uses = self.which(_uses(event))
                self.go.wait(5)
                for use in uses:
                    self.rewrite(use)
                self.done.set()

        def release(event):
            if not self.go.is_set():
                self.go.set()
                assert self.done.wait(5)

        self.gate, self.release = late_batch_gate, release


class _Policy:
    """The batch policy: cancels a batch holding a forbidden command or the dangerous tool."""

    def __init__(self):
        self.seen = []

        def batch_policy(event):
            for use in _uses(event):
                self.seen.append((use["name"], use["input"].get("command", "")))
                if use["name"] == "dangerous" or "forbidden" in use["input"].get("command", ""):
                    event.cancel = "batch policy: no"

        self.gate = batch_policy


def _tools(rig):
    return [rig.marker.tool(), rig.marker.tool("dangerous"), rig.marker.tool("harmless")]


def _run(rig, adapter, late, executor="concurrent", calls=None):
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    policy = _Policy()
    try:
        rig.agent(hooks=[batch_provider(policy.gate, late.gate), provider(late.release)], command="ls",
                  executor=executor, tools=_tools(rig), calls=calls)("go")
    finally:
        late.go.set()
    return policy


def _denied_by(rig, adapter, policy, call_id="call-0"):
    denies = [e for e in rig.events() if e.get("outcome") == "deny" and e.get("call_id") == call_id]
    assert denies, rig.events()
    assert (denies[-1]["hook"], denies[-1]["failure"]) == (adapter.callable_id(policy.gate), None)


@pytest.mark.parametrize("executor", ["concurrent", "sequential"])
@pytest.mark.parametrize("target,deny,allow,runs", TARGETS, ids=[t[0] for t in TARGETS])
def test_a_late_batch_gate_rewrite_is_judged_again_by_the_batch_gates(rig, adapter, executor, target, deny, allow, runs):
    late = _LateBatch(deny)
    policy = _run(rig, adapter, late, executor)
    assert not rig.marker.ran
    assert len(policy.seen) == 2  # the batch, then the rewritten use in a round of its own
    _denied_by(rig, adapter, policy)
    assert late.runs == 2


@pytest.mark.parametrize("executor", ["concurrent", "sequential"])
@pytest.mark.parametrize("target,deny,allow,runs", TARGETS, ids=[t[0] for t in TARGETS])
def test_a_harmless_late_batch_gate_rewrite_is_judged_again_and_runs(rig, adapter, executor, target, deny, allow, runs):
    late = _LateBatch(allow)
    policy = _run(rig, adapter, late, executor)
    assert rig.marker.runs() == [runs]
    assert len(policy.seen) == 2 and policy.seen[0] == ("run_command", "ls")
    assert not [e for e in rig.events() if e.get("outcome") == "deny"]


# ---------------------------------------------------------------- several tool uses


def _two_calls():
    return [("run_command", {"command": "ls"}), ("run_command", {"command": "pwd"})]


@pytest.mark.parametrize("executor", ["concurrent", "sequential"])
def test_a_late_batch_gate_rewriting_one_use_of_two_denies_that_one_only(rig, adapter, executor):
    late = _LateBatch(_edit_in_place("forbidden rm"), which=lambda uses: uses[1:])
    policy = _run(rig, adapter, late, executor, calls=_two_calls())
    assert rig.marker.runs() == ["ls"]
    _denied_by(rig, adapter, policy, "call-1")
    assert not [e for e in rig.events() if e.get("outcome") == "deny" and e.get("call_id") == "call-0"]


@pytest.mark.parametrize("executor", ["concurrent", "sequential"])
def test_a_late_batch_gate_rewriting_one_use_of_two_harmlessly_runs_both(rig, adapter, executor):
    late = _LateBatch(_edit_in_place("pwd -P"), which=lambda uses: uses[1:])
    policy = _run(rig, adapter, late, executor, calls=_two_calls())
    assert rig.marker.runs() == ["ls", "pwd -P"]
    assert ("run_command", "pwd -P") in policy.seen


# ---------------------------------------------------------------- a late gate writing again while judged again


class _LateEachRound:
    """A BeforeToolsEvent gate late on its first run: abandoned at its deadline, it edits
    the command to the next of ``to`` each time it is released (first by a per-call
    callback, then by the policy in each round judging the use again)."""

    def __init__(self, to):
        self.to, self.runs = list(to), 0
        self.go = [threading.Event() for _ in self.to]
        self.done = [threading.Event() for _ in self.to]

        def rewriting_late_batch_gate(event):
            self.runs += 1
            if self.runs == 1:
                uses = _uses(event)
                for go, done, to in zip(self.go, self.done, self.to):
                    go.wait(5)
                    for use in uses:
                        use["input"]["command"] = to
                    done.set()

        def release(event):
            self.next()

        self.gate, self.release = rewriting_late_batch_gate, release

    def next(self):
        for go, done in zip(self.go, self.done):
            if not go.is_set():
                go.set()
                assert done.wait(5)
                return


def _run_each(rig, adapter, to):
    late = _LateEachRound(to)
    rig.config(tables=f'[hooks."{adapter.callable_id(late.gate)}"]\non_error = "allow"')
    seen = []

    def releasing_batch_policy(event):
        """Judges the commands as it is given them; in a round judging a use again, it
        releases the abandoned gate (which writes while this round judges)."""
        commands = [use["input"].get("command", "") for use in _uses(event)]
        seen.extend(commands)
        if len(seen) > 1:
            late.next()
        if any("forbidden" in c for c in commands):
            event.cancel = "batch policy: no"

    try:
        rig.agent(hooks=[batch_provider(releasing_batch_policy, late.gate), provider(late.release)], command="ls")("go")
    finally:
        for go in late.go:
            go.set()
    return late, seen, releasing_batch_policy


def test_a_late_batch_gate_writing_again_while_judged_again_is_judged_once_more(rig, adapter):
    late, seen, policy = _run_each(rig, adapter, ["echo second", "forbidden rm"])
    assert not rig.marker.ran
    assert seen[:2] == ["ls", "echo second"] and "forbidden rm" in seen
    _denied_by(rig, adapter, type("P", (), {"gate": policy}))


def test_a_late_batch_gate_writing_harmlessly_again_while_judged_again_runs(rig, adapter):
    late, seen, policy = _run_each(rig, adapter, ["echo second", "echo third"])
    assert rig.marker.runs() == ["echo third"]
    assert seen == ["ls", "echo second", "echo third"]


def test_a_use_still_rewritten_each_time_the_batch_gates_judge_it_again_denies_invalid(rig, adapter):
    late, seen, policy = _run_each(rig, adapter, ["echo 2", "echo 3", "echo 4", "echo 5", "echo 6"])
    assert not rig.marker.ran
    last = rig.last()
    assert (last["outcome"], last["failure"], last["hook"]) == ("deny", "invalid", "strands:BeforeToolsEvent")


# ---------------------------------------------------------------- a tool of the batch editing a later use


def _editing_tool(rig, to, held):
    """A tool that edits the batch's other tool use (held by the batch gate) in place."""
    from strands import tool

    @tool
    def edit_next(note: str) -> str:
        """Edits the next call.

        Args:
            note: anything
        """
        held[0]["input"]["command"] = to
        return "edited"

    return edit_next


def _run_edit(rig, to):
    held = []
    policy = _Policy()

    def holding_batch_gate(event):  # answers in time: it only keeps the second use
        held[:] = _uses(event)[1:]

    calls = [("edit_next", {"note": "x"}), ("run_command", {"command": "ls"})]
    rig.agent(hooks=[batch_provider(policy.gate, holding_batch_gate)], calls=calls, executor="sequential",
              tools=[rig.marker.tool(), _editing_tool(rig, to, held)])("go")
    return policy


def test_a_use_a_tool_of_the_batch_edited_before_its_call_is_judged_again_by_the_batch_gates(rig, adapter):
    policy = _run_edit(rig, "forbidden rm")
    assert not rig.marker.ran
    assert ("run_command", "forbidden rm") in policy.seen
    _denied_by(rig, adapter, policy, "call-1")


def test_a_use_a_tool_of_the_batch_edited_harmlessly_before_its_call_runs(rig, adapter):
    policy = _run_edit(rig, "ls -l")
    assert rig.marker.runs() == ["ls -l"]
    assert ("run_command", "ls -l") in policy.seen


# ---------------------------------------------------------------- a per-call callback's own rewrite


def _run_own_rewrite(rig, to):
    policy = _Policy()

    def per_call_rewrite(event):
        event.tool_use["input"]["command"] = to

    rig.agent(hooks=[batch_provider(policy.gate), provider(per_call_rewrite)], command="ls")("go")
    return policy


def test_a_per_call_callbacks_own_rewrite_after_a_batch_in_time_runs_as_upstream(rig, adapter):
    """The batch gates answered in time: the per-call callback's rewrite is the per-call
    stage's (as upstream's stages); the batch gates are not asked again."""
    policy = _run_own_rewrite(rig, "ls --safe")
    assert rig.marker.runs() == ["ls --safe"]
    assert policy.seen == [("run_command", "ls")]


def test_a_use_the_batch_never_saw_is_judged_by_its_call_gates_only(rig, adapter):
    """A direct tool call (no batch upstream either) is no batch's: it runs as upstream."""
    policy = _Policy()
    agent = rig.agent(hooks=[batch_provider(policy.gate), provider(lambda event: None)], command="ls")
    agent("go")
    agent.tool.run_command(command="echo direct")
    assert sorted(rig.marker.runs()) == ["echo direct", "ls"]
    assert policy.seen == [("run_command", "ls")]
