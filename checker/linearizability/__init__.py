"""Linearizability of client histories against sequential models (Wing–Gong/Lowe search, partitioned by key)."""

from .engine import Timeout, linearizable
from .formats import FORMATS, read_history
from .history import UNKNOWN, History, HistoryError, Operation
from .models import MODELS, Model, ModelError, load_model
from .search import OpenPart, Verdict, check

__all__ = ["FORMATS", "MODELS", "UNKNOWN", "History", "HistoryError", "Model", "ModelError", "OpenPart", "Operation",
           "Timeout", "Verdict", "check", "linearizable", "load_model", "read_history"]
