"""Helpers shared by the OpenTelemetry sink tests (conftest puts this folder on sys.path)."""

from failsecure.adapter import Adapter
from failsecure.verdict import ABSTAIN, Action, Invalid, Verdict

#: a value that must never leave the process: it is put in tool arguments and exception text
CANARY = "CANARY-otel-5c1e-SECRET"


def validate(result):
    if result is None:
        return ABSTAIN
    if type(result) is str and result in ("allow", "deny", "ask"):
        return Verdict(action=Action(result), reason=f"said {result}")
    raise Invalid()


class Toy(Adapter):
    name = "toy"
    distribution = "failsecure-toy-not-installed"

    def to_verdict(self, native):
        return validate(native)

    def _patch(self):
        pass

    def _probe(self, gate):
        return False


def leaky(command):
    raise RuntimeError(f"could not parse {command}")


def deny_raised(toy, call_id="c-deny"):
    """A decision whose hook raised with the canary in its text, on arguments holding it."""
    outcome = toy.hook_call("toy:leaky", leaky, command=f"rm -rf / # {CANARY}")
    return toy.decide("shell", [outcome], call_id=call_id, arguments={"command": CANARY})


def allow(toy, call_id="c-allow"):
    return toy.decide("shell", [toy.hook_call("toy:ok", lambda: "allow")], call_id=call_id, arguments={"command": CANARY})
