"""kernelwright.memory: episodic memory and the reasoning graph (see DESIGN.md, Memory)."""
