"""Linearizability of client histories against sequential models (Wing–Gong/Lowe search, partitioned by key)."""

from .formats import FORMATS, read_history
from .history import UNKNOWN, History, HistoryError, Operation
from .models import MODELS, Model, ModelError, load_model
from .search import Verdict, check, linearizable

__all__ = ["FORMATS", "MODELS", "UNKNOWN", "History", "HistoryError", "Model", "ModelError", "Operation", "Verdict",
           "check", "linearizable", "load_model", "read_history"]
