import sys

from archline.cli.main import main

sys.exit(main())
