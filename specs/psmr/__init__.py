"""P-SMR (Marandi, Bezerra, Pedone, ICDCS 2014): the spec (`spec`) and the service's commands, C-Dep and C-G
(`commands`), shared with the proof and the running key-value service."""
