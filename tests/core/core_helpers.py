"""Helpers shared by the core tests (conftest puts this folder on sys.path)."""

from failsecure.verdict import ABSTAIN, Action, Invalid, Verdict


def validate(result):
    """A framework-like validator: None = no opinion, 'allow'/'deny'/'ask' strings."""
    if result is None:
        return ABSTAIN
    if type(result) is str and result in ("allow", "deny", "ask"):
        return Verdict(action=Action(result), reason=f"said {result}")
    raise Invalid()
