"""The ground: errors, where the suite's files live, install hints, the fixed search path."""
