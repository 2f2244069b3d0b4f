"""Tests of the todo section."""
