"""failsecure.testing: what a framework author or an operator tests a dispatcher with.

- ``harness``  the conformance kit's harness API (``Harness``, ``Seen``, ``Ran``,
               ``NotSupported``): how the kit drives one framework's real dispatcher
- ``matrix``   the fault matrix: its cases, the hostile objects they use, ``run_case``
- ``plugin``   the pytest plugin (``pytest --failsecure-conformance``)
- ``audit``    a throwaway trusted config with an audit file, and readers of what was
               audited (``AuditRig``, ``AuditFile``)

Nothing here imports pytest or a framework until it is used.
"""

from .audit import AuditFile, AuditRig
from .harness import Harness, NotSupported, Ran, Seen
from .matrix import DEADLINE, FORBIDDEN, HARMLESS, SECRET, HostileAnswer, HostileDict, HostileError

__all__ = ("AuditFile", "AuditRig", "DEADLINE", "FORBIDDEN", "HARMLESS", "Harness", "HostileAnswer", "HostileDict",
           "HostileError", "NotSupported", "Ran", "SECRET", "Seen")
