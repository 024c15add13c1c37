"""One module per report page: analysis, scale, correlate, trajectory."""
