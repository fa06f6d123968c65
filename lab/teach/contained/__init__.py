"""The code that runs in the student's contained child process: the trust boundary as a package
boundary. Every module the checker's children load of lab.teach is here (the executor, the sandbox's
set-up, the offline GPU compile, the source-to-kernel builder, the request/result channel); the judge
(:mod:`lab.teach.checker`, :mod:`lab.teach.diagnose`, :mod:`lab.teach.lessons`, grading, the
benchmark's judge) lives outside it and is never imported from here (an import-linter ``forbidden``
contract in pyproject.toml, and tests/test_architecture.py). The judge may import this package; the
reverse never. docs/isolation.md says what each child may read and write."""
