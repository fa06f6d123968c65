"""Views: rich tables, live progress, matplotlib plots. Only the CLI prints or draws."""
