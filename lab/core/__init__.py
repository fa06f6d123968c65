"""The engine: one run (validate -> plan -> execute), the correctness oracle, timing, contenders,
the platform (driver, device, clocks, compilers) and the session. No rich, click or matplotlib here,
and nothing from the other lab subpackages."""
