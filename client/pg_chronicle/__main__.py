"""python3 -m pg_chronicle: the pg-chronicle command."""

import sys

from pg_chronicle.cli import main

sys.exit(main())
