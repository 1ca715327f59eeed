# Import by <namespace>/<name>. The manifest is rebuilt from the fields the olapgke field manager
# owns (or, for objects applied by other tools, from the live object without status).
terraform import olapgke_statefulset.historical olap/historical
