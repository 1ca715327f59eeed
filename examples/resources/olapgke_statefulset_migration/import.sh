# Import by <namespace>/<statefulset>. The next plan lists the ordinals that still need a move.
terraform import olapgke_statefulset_migration.historical olap/historical
