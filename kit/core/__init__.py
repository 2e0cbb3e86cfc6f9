"""The ground floor: errors, paths, atomic writes, hosts, run specs and the table of factors."""
