"""Pure figure functions: render_*(ax, ...) draws on the axes it is given and returns the data it
drew (so tests can check a figure without a browser). No widgets, no global state."""
