// The translation unit that builds the test suites' precompiled headers (tests/CMakeLists.txt,
// HILSIM_PRECOMPILED_HEADERS); it has no code of its own.
