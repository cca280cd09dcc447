"""Machine-checked facts about specs. Each module is runnable (`python -m lockstep.proofs.NAME`) and tested."""
