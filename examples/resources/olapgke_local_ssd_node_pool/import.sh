# project/location/cluster/name
terraform import olapgke_local_ssd_node_pool.olap sandbox/us-central1-a/olap/olap-ssd

# or the node pool name alone, with project, location and cluster from the provider
terraform import olapgke_local_ssd_node_pool.olap olap-ssd
