"""The shipped programs, as `.dl` files beside this module."""
