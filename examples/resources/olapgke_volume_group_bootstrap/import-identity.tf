# The namespace of the bootstrap DaemonSet (olapgke-system unless configured).
import {
  to = olapgke_volume_group_bootstrap.this
  identity = {
    namespace = "olapgke-system"
  }
}
