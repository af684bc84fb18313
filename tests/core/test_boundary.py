"""The tool boundary's core (failsecure.boundary, the Adapter SDK's wrap_run/wrap_boundary/
wrap_subclasses/granted): one execution per grant, the judged arguments only, a grant of
one run never usable in another (thread, task), outside a run nothing to check, the deny
rule and the ``ungoverned`` setting (a project file may only tighten it)."""

import asyncio
import json
import threading

import pytest

from core_helpers import validate
from failsecure import boundary, policy
from failsecure.adapter import Adapter, Ungoverned
from failsecure.verdict import Action


class Toy(Adapter):
    name = "toy"
    distribution = "pytest"
    modules = ("fs_toy_framework",)

    def __init__(self, gates=()):
        super().__init__()
        self.gates = list(gates)

    def _patch(self):
        pass

    def to_verdict(self, native):
        return validate(native)

    def _probe(self, gate):
        return False

    def inventory(self):
        return list(self.gates)


class Tool:
    """A toy framework's tool: ``run`` is its innermost call, ``agent`` its run."""

    def __init__(self, name):
        self.name = name
        self.ran = []

    def run(self, **kwargs):
        self.ran.append(kwargs)
        return "ran"

    async def arun(self, **kwargs):
        self.ran.append(kwargs)
        return "ran"

    async def stream(self, call_id, arguments):
        self.ran.append(arguments)
        yield "ran"


class Runner:
    def run(self, fn):
        return fn()

    async def arun(self, fn):
        return await fn()


@pytest.fixture
def toy():
    adapter = Toy(gates=["toy:gate"])
    adapter.patch()
    adapter.wrap_run(Runner, "run")
    adapter.wrap_run(Runner, "arun")
    read = lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None)  # noqa: E731
    adapter.wrap_boundary(Tool, "run", read)
    adapter.wrap_boundary(Tool, "arun", read)
    adapter.wrap_boundary(Tool, "stream", lambda tool, args, kwargs: (tool.name, args[0], args[1], tool.name, None))
    yield adapter
    adapter.unpatch()


def allow(toy, tool, arguments, call_id=None):
    decision = toy.decide(tool, [toy.hook_call("toy:gate", lambda: "allow")], arguments=arguments)
    toy.granted(decision, tool, call_id, arguments)
    return decision


def audited(tmp_path):
    from failsecure import audit

    audit.flush(5)
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def audit_file(write_config, tmp_path):
    write_config(f'[audit]\npath = "{tmp_path / "audit.jsonl"}"\n')
    return tmp_path


def test_one_grant_is_one_execution(toy, audit_file):
    shell = Tool("shell")

    def body():
        allow(toy, "shell", {"command": "ls"})
        assert shell.run(command="ls") == "ran"
        with pytest.raises(Ungoverned) as second:
            shell.run(command="ls")
        return second.value

    denied = Runner().run(body)
    assert shell.ran == [{"command": "ls"}]
    assert denied.decision.denied and denied.decision.primary.failure.value == "ungoverned"
    event = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert [(e["tool"], e["outcome"], e["hook"]) for e in event] == [("shell", "deny", "toy:Tool.run")]


def test_other_arguments_than_judged_are_ungoverned(toy):
    shell = Tool("shell")

    def body():
        allow(toy, "shell", {"command": "ls"})
        with pytest.raises(Ungoverned):
            shell.run(command="rm -rf /")
        assert shell.run(command="ls") == "ran"  # the judged call still may run, once

    Runner().run(body)
    assert shell.ran == [{"command": "ls"}]


def test_a_call_id_grant_needs_its_arguments_and_is_spent(toy):
    shell = Tool("shell")

    async def body():
        allow(toy, "shell", {"command": "ls"}, call_id="c1")
        with pytest.raises(Ungoverned):
            async for _ in shell.stream("c1", {"command": "other"}):
                pass
        assert [x async for x in shell.stream("c1", {"command": "ls"})] == ["ran"]
        with pytest.raises(Ungoverned):
            async for _ in shell.stream("c1", {"command": "ls"}):
                pass

    asyncio.run(Runner().arun(body))
    assert shell.ran == [{"command": "ls"}]


def test_a_raised_execution_gives_its_grant_back(toy):
    """The framework's own retry of a tool that raised runs the judged call again."""
    flaky = Tool("flaky")
    failures = [RuntimeError("transient")]

    def run(**kwargs):
        if failures:
            raise failures.pop()
        flaky.ran.append(kwargs)
        return "ran"

    def body():
        allow(toy, "flaky", {"x": 1})
        with pytest.raises(RuntimeError):
            toy_call(run, flaky, x=1)
        assert toy_call(run, flaky, x=1) == "ran"
        with pytest.raises(Ungoverned):
            toy_call(run, flaky, x=1)

    def toy_call(fn, tool, **kwargs):
        denied, token = toy.at_boundary(tool.name, None, kwargs)
        if denied is not None:
            raise Ungoverned(denied)
        try:
            result = fn(**kwargs)
        except BaseException:
            toy.leave(token, failed=True)
            raise
        toy.leave(token)
        return result

    Runner().run(body)
    assert flaky.ran == [{"x": 1}]


def test_a_grant_of_one_run_is_not_usable_in_another_thread_or_task(toy):
    shell = Tool("shell")
    seen = {}

    def other_thread():
        def body():
            try:
                shell.run(command="ls")
                seen["thread"] = "ran"
            except Ungoverned:
                seen["thread"] = "denied"

        Runner().run(body)

    def body():
        allow(toy, "shell", {"command": "ls"})
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()

    Runner().run(body)

    async def task_body():
        allow(toy, "shell", {"command": "ls"})

        async def other():
            async def inner():
                try:
                    await shell.arun(command="ls")
                    return "ran"
                except Ungoverned:
                    return "denied"

            # a separate run (its own entry point), in a context that did not inherit the grant
            import contextvars

            return await asyncio.get_running_loop().create_task(Runner().arun(inner), context=contextvars.Context())

        seen["task"] = await other()
        assert await shell.arun(command="ls") == "ran"  # the grant's own run still has it

    asyncio.run(Runner().arun(task_body))
    assert seen == {"thread": "denied", "task": "denied"}
    assert shell.ran == [{"command": "ls"}]


def test_a_thread_that_copied_the_run_context_is_in_the_run(toy):
    import contextvars

    shell = Tool("shell")

    def body():
        allow(toy, "shell", {"command": "ls"})
        context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(shell.run,), kwargs={"command": "ls"})
        worker.start()
        worker.join()

    Runner().run(body)
    assert shell.ran == [{"command": "ls"}]


def test_outside_a_run_nothing_is_checked(toy):
    shell = Tool("shell")
    assert shell.run(command="anything") == "ran"
    assert boundary.current() is None


def test_the_tools_own_execution_is_one_call(toy):
    """A tool whose run calls its own inner method (``run`` -> ``_run``) is one execution;
    a tool calling another tool's is not."""
    class Wrapper(Tool):
        def run(self, **kwargs):
            return self.inner.run(**kwargs)

    toy.wrap_boundary(Wrapper, "run", lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None))
    same, other = Wrapper("shell"), Wrapper("wrapper")
    same.inner = Tool("shell")
    other.inner = Tool("shell")

    def body():
        allow(toy, "shell", {"command": "ls"})
        assert same.run(command="ls") == "ran"
        allow(toy, "wrapper", {"command": "ls"})
        with pytest.raises(Ungoverned):
            other.run(command="ls")

    Runner().run(body)
    assert same.inner.ran == [{"command": "ls"}] and other.inner.ran == []


def test_no_gate_allows_and_audits(audit_file):
    bare = Toy(gates=[])
    bare.patch()
    bare.wrap_run(Runner, "run")
    bare.wrap_boundary(Tool, "run", lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None))
    try:
        shell = Tool("shell")
        Runner().run(lambda: shell.run(command="ls"))
        assert shell.ran == [{"command": "ls"}]
    finally:
        bare.unpatch()
    event = [e for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert [(e["tool"], e["outcome"]) for e in event] == [("shell", "allow")]


def test_the_core_rule_denies_without_a_framework_gate(write_config):
    """``must_decide``: a required hook of the framework makes an ungoverned call deny."""
    write_config('required = ["toy:gate"]\n')
    bare = Toy(gates=[])
    assert boundary.enforced(bare)
    write_config("")
    assert not boundary.enforced(bare)


def test_the_audit_setting_is_trusted_only(write_config, tmp_path, monkeypatch):
    gated = Toy(gates=["toy:gate"])
    config = write_config('ungoverned = "audit"\n')
    assert config.ungoverned == "audit" and not boundary.enforced(gated)
    # a project file may only tighten it
    monkeypatch.delenv("FAILSECURE_CONFIG")
    (tmp_path / "failsecure.toml").write_text('ungoverned = "audit"\n')
    config = policy.reload()
    assert config.ungoverned == "deny" and boundary.enforced(gated)
    assert any("ungoverned" in setting for _, setting in config.ignored)


def test_an_invalid_setting_is_a_config_error(write_config):
    config = write_config('ungoverned = "maybe"\n')
    assert config.error and "ungoverned" in config.error


def test_an_ask_or_deny_takes_a_call_id_grant_back(toy):
    shell = Tool("shell")

    async def body():
        allow(toy, "shell", {"command": "ls"}, call_id="c1")
        denied = toy.decide("shell", [toy.hook_call("toy:gate", lambda: "deny")])
        assert denied.action is Action.DENY
        toy.granted(denied, "shell", "c1", {"command": "ls"})
        with pytest.raises(Ungoverned):
            async for _ in shell.stream("c1", {"command": "ls"}):
                pass

    asyncio.run(Runner().arun(body))
    assert shell.ran == []


def test_new_subclasses_get_the_boundary(toy):
    class Base:
        def run(self, **kwargs):
            raise NotImplementedError

    class Early(Base):
        name = "early"

        def run(self, **kwargs):
            return "early"

    toy.wrap_subclasses(Base, ("run",), lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None))

    class Late(Base):
        name = "late"

        def run(self, **kwargs):
            return "late"

    def body():
        for cls in (Early, Late):
            with pytest.raises(Ungoverned):
                cls().run(x=1)
        allow(toy, "late", {"x": 1})
        assert Late().run(x=1) == "late"

    Runner().run(body)


def test_ungoverned_calls_are_counted_for_doctor(toy, monkeypatch):
    monkeypatch.setattr(boundary, "seen", {})
    shell = Tool("shell")
    with pytest.raises(Ungoverned):
        Runner().run(lambda: shell.run(command="ls"))
    Runner().run(lambda: None)
    assert boundary.seen == {"toy": 1}


class Streamer:
    def stream(self, fn, steps):
        for _ in range(steps):
            yield fn()


def test_a_generator_run_entry_is_the_run_only_while_a_step_runs():
    adapter = Toy(gates=["toy:gate"])
    adapter.patch()
    adapter.wrap_run(Streamer, "stream")
    try:
        seen = []
        gen = Streamer().stream(lambda: (adapter.in_run(), id(boundary.current())), 2)
        assert not adapter.in_run()  # created, not started
        for inside, run in gen:
            seen.append((inside, run))
            assert not adapter.in_run()  # the consumer's code between items
        assert [s[0] for s in seen] == [True, True]
        assert seen[0][1] == seen[1][1]  # one run for every step
        assert not adapter.in_run()
    finally:
        adapter.unpatch()


def test_a_generator_run_entry_closed_early_closes_its_generator():
    adapter = Toy()
    adapter.patch()
    closed = []

    class Early:
        def stream(self):
            try:
                yield 1
                yield 2
            finally:
                closed.append(True)

    adapter.wrap_run(Early, "stream")
    try:
        gen = Early().stream()
        assert next(gen) == 1
        gen.close()
        assert closed == [True] and not adapter.in_run()
    finally:
        adapter.unpatch()


class Outer(Toy):
    """A second adapter whose boundary wraps the same tool call around the first's (as
    pydantic-ai's around code-puppy's)."""

    name = "outer"


@pytest.mark.parametrize("outer_first", [True, False])
def test_two_adapters_around_one_tool(toy, audit_file, outer_first):
    """An execution that one adapter's boundary let on ungoverned (it has no gate) is
    judged again by the other's: a gated adapter's ungoverned call is denied whichever
    boundary is outermost; a call granted by either runs (allow twin)."""
    bare = Outer(gates=[])
    bare.patch()
    read = lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None)  # noqa: E731

    class Inner(Tool):
        def run(self, **kwargs):
            self.ran.append(kwargs)
            return "ran"

    # the later wrap is the outer one
    first, second = (toy, bare) if outer_first else (bare, toy)
    first.wrap_boundary(Inner, "run", read)
    second.wrap_boundary(Inner, "run", read)
    try:
        shell = Inner("shell")

        def bypass():
            with pytest.raises(Ungoverned):
                shell.run(command="smuggled")

        def judged():
            allow(toy, "shell", {"command": "ls"})
            assert shell.run(command="ls") == "ran"

        Runner().run(bypass)
        Runner().run(judged)
    finally:
        bare.unpatch()
    assert shell.ran == [{"command": "ls"}]
    events = [(e["framework"], e["outcome"]) for e in audited(audit_file) if e["failure"] == "ungoverned"]
    assert ("toy", "deny") in events and set(events) <= {("toy", "deny"), ("outer", "allow")}


def test_a_later_form_is_made_only_when_the_judged_form_does_not_match(toy):
    """A framework's normalisation of the judged arguments (hermes' coercion, made on a copy):
    not made at all when the execution runs with the judged arguments as they are; made,
    once, when it runs with the normalised ones; other arguments still match nothing."""
    shell = Tool("shell")
    made = []

    def normalise(arguments):
        made.append(1)
        return {k: int(v) if v.isdigit() else v for k, v in arguments.items()}

    def grant(arguments):
        decision = toy.decide("shell", [toy.hook_call("toy:gate", lambda: "allow")], arguments=arguments)
        copied = dict(arguments)
        toy.granted(decision, "shell", None, arguments, also=(boundary.Later(lambda: normalise(copied)),))

    def body():
        grant({"lines": "5"})
        assert shell.run(lines="5") == "ran"  # as judged: the other form is never made
        assert made == []
        grant({"lines": "5"})
        assert shell.run(lines=5) == "ran"  # the normalised form, made now
        assert made == [1]
        grant({"lines": "5"})
        with pytest.raises(Ungoverned):
            shell.run(lines=6)  # neither form

    Runner().run(body)
    assert shell.ran == [{"lines": "5"}, {"lines": 5}]


def test_a_later_form_that_raises_or_is_changed_matches_nothing(toy):
    shell = Tool("shell")

    def failing():
        raise RuntimeError("the framework's helper failed")

    def body():
        for make in (failing, lambda: boundary._CHANGED):
            decision = toy.decide("shell", [toy.hook_call("toy:gate", lambda: "allow")], arguments={"lines": "5"})
            toy.granted(decision, "shell", None, {"lines": "5"}, also=(boundary.Later(make),))
            with pytest.raises(Ungoverned):
                shell.run(lines=5)
            assert shell.run(lines="5") == "ran"  # the judged form stands

    Runner().run(body)
    assert shell.ran == [{"lines": "5"}, {"lines": "5"}]


def test_a_later_form_by_call_id(toy):
    shell = Tool("shell")

    async def body():
        decision = toy.decide("shell", [toy.hook_call("toy:gate", lambda: "allow")], arguments={"lines": "5"})
        toy.granted(decision, "shell", "c1", {"lines": "5"}, also=(boundary.Later(lambda: {"lines": 5}),))
        assert [x async for x in shell.stream("c1", {"lines": 5})] == ["ran"]
        with pytest.raises(Ungoverned):
            async for _ in shell.stream("c1", {"lines": 5}):
                pass

    asyncio.run(Runner().arun(body))
    assert shell.ran == [{"lines": 5}]


def test_a_later_form_made_while_another_thread_consumes_an_earlier_grant_takes_its_own_grant(toy):
    """Red team: a Later's ``make`` is the framework's code (hermes' coerce_tool_args), run
    inside ``_consume`` between finding a grant's index and deleting it. Another thread of
    the run (hermes' concurrent tool executor propagates the context to its workers)
    consuming an earlier grant meanwhile shifts the list: the index then names the next
    grant. The execution must take its own grant: it stays spent (no second execution on
    it) and the other grant stays good (its call is not denied)."""
    shell = Tool("shell")
    entered, go = threading.Event(), threading.Event()

    def grant(arguments, make=None):
        decision = toy.decide("shell", [toy.hook_call("toy:gate", lambda: "allow")], arguments=arguments)
        also = (boundary.Later(make),) if make is not None else ()
        toy.granted(decision, "shell", None, arguments, also=also)

    def slow():
        entered.set()
        go.wait(10)
        return {"n": 2}

    outcome = []

    def worker():
        try:
            outcome.append(shell.run(n=2))
        except Ungoverned as exc:  # pragma: no cover - the failure being demonstrated
            outcome.append(exc)

    def body():
        grant({"n": "1"}, lambda: {"n": 1})
        grant({"n": "2"}, slow)
        grant({"n": "3"})
        import contextvars

        ctx = contextvars.copy_context()
        thread = threading.Thread(target=ctx.run, args=(worker,))
        thread.start()
        assert entered.wait(10)
        assert shell.run(n="1") == "ran"  # the first grant, consumed while the worker makes the second's form
        go.set()
        thread.join(10)
        assert outcome == ["ran"]
        with pytest.raises(Ungoverned):
            shell.run(n=2)  # the second grant is spent
        assert shell.run(n="3") == "ran"  # the third one is still good

    Runner().run(body)
    assert shell.ran == [{"n": 2}, {"n": "1"}, {"n": "3"}] or shell.ran == [{"n": "1"}, {"n": 2}, {"n": "3"}]


# ---------------------------------------------------------------- a gate's context changes (guard._give_back)

import contextvars  # noqa: E402

_REQUEST = contextvars.ContextVar("fs_test_boundary_request", default=None)


def test_a_gate_cannot_forge_the_run_the_execution_under_way_or_the_config(toy):
    """A sync gate with a deadline runs on the guard's worker; the context variables it
    sets go back to the caller (as upstream, where it runs in the caller's context), but
    never failsecure's own: setting the run marker, the execution under way or the config
    in force changes nothing the boundary decides. The twin: the user's own variable
    does reach the caller, and a judged call runs."""
    shell = Tool("shell")
    seen = []

    def forging():
        boundary._inside.set(("toy", "shell", True))  # "inside shell's own execution"
        boundary._run.set(None)  # "not inside a run"
        policy._override.set(policy.validate({"ungoverned": "audit"}))  # "ungoverned calls only audited"
        _REQUEST.set("user")
        return "allow"

    def body():
        assert policy.current().timeout_for("toy:gate", False)  # the gate has a deadline: it runs on the worker
        decision = toy.decide("read", [toy.hook_call("toy:gate", forging)], arguments={"path": "x"})
        assert decision.action is Action.ALLOW
        seen.append(_REQUEST.get())
        with pytest.raises(Ungoverned):
            shell.run(command="rm -rf /")
        allow(toy, "shell", {"command": "ls"})
        assert shell.run(command="ls") == "ran"

    contextvars.Context().run(Runner().run, body)
    assert seen == ["user"] and shell.ran == [{"command": "ls"}]
