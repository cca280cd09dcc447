"""Conformance of implementations: logs written by any implementation in Lockstep's event schema
(`schema`), merged by causal order (`causal`), mapped to spec actions by a user's refinement mapping
(`mapping`) and validated as a bounded search over the spec's states (`search`), with an explanation
when no behaviour of the spec matches (`explain`). `docs/conformance.md` describes the schema."""
