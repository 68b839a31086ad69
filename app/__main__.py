"""`python -m headcast.app` = the `headcast` command."""

from headcast.app.cli import main

raise SystemExit(main())
