"""`python -m turnstore.cli`: the `turnstore` command."""

import sys

from . import main

sys.exit(main())
