# shellcheck shell=bash
# Debian's maintainer scripts would ask for (and try to set up) databases,
# keystone users and endpoints: every such debconf question answered "no".
# Printed for debconf-set-selections by install.sh (the host) and
# ../os-images/build.sh (the images).
os_preseed() {
  for p in keystone glance-common nova-common nova-api neutron-common placement-common cinder-common octavia-common; do
    echo "$p $p/dbconfig-install boolean false"
    echo "$p $p/dbconfig-upgrade boolean false"
    echo "$p $p/dbconfig-remove boolean false"
  done
  cat <<'PRESEED'
dbconfig-common dbconfig-common/dbconfig-install boolean false
keystone keystone/configure_db boolean false
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
glance-common glance/configure_db boolean false
glance-common glance/configure_rabbit boolean false
glance-common glance/configure_ksat boolean false
glance-api glance/configure_api-endpoint boolean false
placement-common placement/configure_db boolean false
placement-common placement/configure_ksat boolean false
placement-api placement/configure_api-endpoint boolean false
nova-common nova/configure_db boolean false
nova-common nova/configure_rabbit boolean false
nova-common nova/configure_ksat boolean false
nova-common nova/configure_neutron boolean false
nova-common nova/configure_placement boolean false
nova-api novaapi/configure_db boolean false
nova-api nova/configure_api-endpoint boolean false
neutron-common neutron/configure_db boolean false
neutron-common neutron/configure_rabbit boolean false
neutron-common neutron/configure_ksat boolean false
neutron-common neutron/configure_nova boolean false
neutron-api neutron/configure_api-endpoint boolean false
cinder-common cinder/configure_db boolean false
cinder-common cinder/configure_rabbit boolean false
cinder-common cinder/configure_ksat boolean false
cinder-api cinder/configure_api-endpoint boolean false
octavia-common octavia/configure_db boolean false
octavia-common octavia/configure_rabbit boolean false
octavia-common octavia/configure_ksat boolean false
octavia-api octavia/configure_api-endpoint boolean false
PRESEED
}
