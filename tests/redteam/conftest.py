"""The core tests' fixtures (a clean config per test, ``write_config``) for the red-team
reproducers of core behaviour."""

import importlib.util
import os
import sys

_core = os.path.join(os.path.dirname(os.path.dirname(__file__)), "core")
sys.path.insert(0, _core)
_spec = importlib.util.spec_from_file_location("_redteam_core_conftest", os.path.join(_core, "conftest.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

clean_config = _module.clean_config
write_config = _module.write_config
