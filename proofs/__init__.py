"""Machine-checked facts about specs. Each module is runnable (`python -m proofs.NAME`) and tested."""
