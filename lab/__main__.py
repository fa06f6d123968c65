from lab.cli import entry

entry()
