#!/bin/sh
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# TEST TOOLING: a throw-away private CA and one server certificate for the hub and CDN stand-ins
# (valid for 127.0.0.1, 127.0.0.2 and localhost), made fresh for each test run, so no private key
# is ever committed. Works with OpenSSL 1.1.1 (Debian 11, the simulated hosts) and 3.x.
#
#   make_test_ca.sh DIR    ->  DIR/ca.crt (trust this: model_store_ca_path), DIR/server.crt,
#                              DIR/server.key; the CA's key is deleted once the certificate is signed.
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
umask 077
cat > ca.cnf <<'EOF'
[req]
distinguished_name = dn
prompt = no
x509_extensions = ca_ext
[dn]
CN = gpu_fleet test CA (hub stand-in)
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
cat > server.cnf <<'EOF'
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, IP:127.0.0.2, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
openssl ecparam -name prime256v1 -genkey -noout -out ca.key
openssl req -x509 -new -key ca.key -config ca.cnf -days 30 -sha256 -out ca.crt
openssl ecparam -name prime256v1 -genkey -noout -out server.key
openssl req -new -key server.key -subj "/CN=hub-standin" -out server.csr
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -sha256 \
    -extfile server.cnf -out server.crt 2>/dev/null
rm -f ca.key server.csr ca.srl ca.cnf server.cnf
chmod 0644 ca.crt server.crt
