import sys

from explorer.interfaces.cli import main

sys.exit(main())
