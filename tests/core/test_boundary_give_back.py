"""``wrap_boundary(..., give_back=False)``: a framework that never re-runs a raised call
itself (every re-run is dispatched, and judged, again) keeps no grant of an execution
that raised; the default gives it back (tests/core/test_boundary.py)."""

import asyncio

import pytest
from test_boundary import Runner, Toy, allow

from failsecure.adapter import Ungoverned


class Flaky:
    def __init__(self, name):
        self.name = name
        self.ran = []
        self.failures = 1

    def run(self, **kwargs):
        self.ran.append(kwargs)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transient")
        return "ran"

    async def arun(self, **kwargs):
        return self.run(**kwargs)

    async def stream(self, **kwargs):
        self.ran.append(kwargs)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transient")
        yield "ran"


@pytest.fixture(params=[True, False], ids=["give_back", "keep"])
def adapter(request):
    a = Toy(gates=["toy:gate"])
    a.patch()
    a.wrap_run(Runner, "run")
    read = lambda tool, args, kwargs: (tool.name, None, kwargs, tool.name, None)  # noqa: E731
    for attr in ("run", "arun", "stream"):
        a.wrap_boundary(Flaky, attr, read, give_back=request.param)
    yield a, request.param
    a.unpatch()


async def _stream(tool, **kwargs):
    return [item async for item in tool.stream(**kwargs)]


@pytest.mark.parametrize("how", ["run", "arun", "stream"])
def test_a_raised_execution_gives_its_grant_back_only_when_asked(adapter, how):
    toy, give_back = adapter
    tool = Flaky("flaky")
    call = {"run": lambda: tool.run(x=1), "arun": lambda: asyncio.run(tool.arun(x=1)),
            "stream": lambda: asyncio.run(_stream(tool, x=1))}[how]

    def body():
        allow(toy, "flaky", {"x": 1})
        with pytest.raises(RuntimeError):
            call()
        if give_back:
            call()  # the framework's own retry of the judged call
        else:
            with pytest.raises(Ungoverned):
                call()

    Runner().run(body)
    assert tool.ran == [{"x": 1}] * 2 if give_back else tool.ran == [{"x": 1}]
