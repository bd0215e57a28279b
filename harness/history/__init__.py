"""History across commits: the asv suites' logic, asv results, points, step detection, trends."""
