"""The code that runs in the student's contained child process: the trust boundary as a package
boundary. The modules the checker's children load are here (the executor, the sandbox's set-up, the
offline GPU compile and its sandbox, the source-to-kernel builder, the tracer's counts, the bench's
measurement, the request/result channel); of lab.teach outside it a child loads only
:mod:`lab.teach.messages` (Failed and its words), :mod:`lab.teach.cases` (the tests' names and
signatures) and :mod:`lab.teach.procs`. The judge (:mod:`lab.teach.checker`, :mod:`lab.teach.diagnose`,
:mod:`lab.teach.lessons`, :mod:`lab.teach.bench`, grading) lives outside it and is never imported from
here, nor is anything of ``exercises/`` (an import-linter ``forbidden`` contract in pyproject.toml,
and tests/test_architecture.py). The judge may import this package; the reverse never.
docs/isolation.md says what each child may read and write."""
