"""``python -m failsecure``: the same as the ``failsecure`` command."""

import sys

from failsecure.cli import main

sys.exit(main())
