"""kernelwright.prompts: YAML + Jinja2 templates, one per node, shipped as package data."""
