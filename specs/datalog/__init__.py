"""Datalog with aggregates in recursion: the language (parser, analysis, evaluation), the shipped programs, and the
SSP protocol's spec."""
