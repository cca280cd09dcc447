"""Pictures and readable listings of traces: text diffs, message-sequence charts, ShiViz logs, state graphs."""
