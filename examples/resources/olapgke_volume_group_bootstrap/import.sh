# The namespace of the bootstrap DaemonSet (olapgke-system unless configured).
terraform import olapgke_volume_group_bootstrap.this olapgke-system
