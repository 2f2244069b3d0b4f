"""Argument policies for the programs shell_ops runs: the second layer behind the OS sandbox.

`guard.CommandGuard` turns a caller's command into a checked argv or refuses it; `allow_list` says which programs
may run at all; `syntax` reads commands and options; `programs`, `git` and `npm` hold each program's policy.
"""
