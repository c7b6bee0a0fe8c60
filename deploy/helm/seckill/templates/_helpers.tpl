{{/* The release's objects are named <release>-seckill (or the release's name when it holds "seckill"). */}}
{{- define "seckill.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "seckill.labels" -}}
app.kubernetes.io/name: seckill
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels of one component: shop, migrate, zookeeper */}}
{{- define "seckill.selector" -}}
app.kubernetes.io/name: seckill
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "seckill.image" -}}
{{- if .Values.requireDigests -}}
{{- if not .Values.shop.image.digest -}}
{{- fail "shop.image.digest: requireDigests wants every image by digest (sha256:...), which no push can change" -}}
{{- end -}}
{{- if and .Values.zookeeper.enabled (not (contains "@sha256:" .Values.zookeeper.image)) -}}
{{- fail "zookeeper.image: requireDigests wants it by digest (zookeeper:3.8@sha256:...)" -}}
{{- end -}}
{{- if and .Values.mariadb.operator (not (contains "@sha256:" .Values.mariadb.image)) -}}
{{- fail "mariadb.image: requireDigests wants it by digest (mariadb:11.4@sha256:...)" -}}
{{- end -}}
{{- end -}}
{{- if .Values.shop.image.digest -}}
{{ .Values.shop.image.repository }}@{{ .Values.shop.image.digest }}
{{- else -}}
{{ .Values.shop.image.repository }}:{{ .Values.shop.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "seckill.secretName" -}}
{{ .Values.secrets.existingSecret | default (printf "%s-secrets" (include "seckill.fullname" .)) }}
{{- end -}}

{{- define "seckill.mariadbName" -}}
{{ include "seckill.fullname" . }}-mariadb
{{- end -}}

{{- define "seckill.zookeeperName" -}}
{{ include "seckill.fullname" . }}-zookeeper
{{- end -}}

{{/* zookeeper.servers: the ensemble's pods by their stable names, or the user's */}}
{{- define "seckill.zookeeperServers" -}}
{{- if .Values.zookeeper.enabled -}}
{{- $name := include "seckill.zookeeperName" . -}}
{{- $servers := list -}}
{{- range $i := until (int .Values.zookeeper.replicas) -}}
{{- $servers = append $servers (printf "%s-%d.%s-headless.%s.svc:2181" $name $i $name $.Release.Namespace) -}}
{{- end -}}
{{- join "," $servers -}}
{{- else -}}
{{- required "zookeeper.servers: name your ensemble (host:port each) when zookeeper.enabled is false" (join "," .Values.zookeeper.servers) -}}
{{- end -}}
{{- end -}}

{{/* mysql.dsn: the operator's primary Service, or the user's DSN */}}
{{- define "seckill.dsn" -}}
{{- if .Values.mariadb.operator -}}
{{ .Values.mariadb.username }}@tcp({{ include "seckill.mariadbName" . }}-primary.{{ .Release.Namespace }}.svc:3306)/{{ .Values.mariadb.database }}
{{- else -}}
{{- $dsn := required "mariadb.dsn: the DSN of your database when mariadb.operator is false" .Values.mariadb.dsn -}}
{{- if regexMatch "^[^@/]*:[^@]*@" $dsn -}}
{{- fail "mariadb.dsn holds a password (user:password@…): it would sit in a ConfigMap; give user@… and the password as secrets.mysqlPassword" -}}
{{- end -}}
{{ $dsn }}
{{- end -}}
{{- end -}}

{{/* The shop's config.yaml: the user's keys, and those the chart owns. server.addr is not among
them: the image sets SHOP_SERVER_ADDR, which outranks the file, so the Deployment sets it too. */}}
{{- define "seckill.config" -}}
{{- $dir := "/etc/seckill/secrets" -}}
{{- $own := dict
  "mysql" (dict "dsn" (include "seckill.dsn" .) "passwordFile" (printf "%s/mysql-password" $dir))
  "zookeeper" (dict "servers" (include "seckill.zookeeperServers" .)) -}}
{{- if .Values.mysqlTLS -}}
{{- $_ := set $own.mysql "tlsCA" (printf "%s/mysql-ca.pem" $dir) -}}
{{- end -}}
{{- if .Values.zookeeperAuth -}}
{{- $_ := set $own.zookeeper "auth" (printf "file:%s/zookeeper-auth" $dir) -}}
{{- if not (dig "zookeeper" "namespace" "" .Values.shop.config) -}}
{{- $_ := set $own.zookeeper "namespace" (printf "/%s" (include "seckill.fullname" .)) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.auth.mode "jwt" -}}
{{- $a := dict "mode" "jwt" -}}
{{- if eq .Values.auth.jwtAlgorithm "rs256" -}}
{{- $_ := set $a "publicKeyFile" (printf "%s/jwt-public-key" $dir) -}}
{{- else if eq .Values.auth.jwtAlgorithm "hs256" -}}
{{- $_ := set $a "hmacSecretFile" (printf "%s/jwt-hmac-secret" $dir) -}}
{{- else -}}
{{- fail "auth.jwtAlgorithm: hs256 or rs256" -}}
{{- end -}}
{{- $_ := set $own "auth" $a -}}
{{- else if ne .Values.auth.mode "none" -}}
{{- fail "auth.mode: none or jwt" -}}
{{- end -}}
{{- $user := deepCopy .Values.shop.config -}}
{{- $_ := include "seckill.shutdownSeconds" . -}}
{{- toYaml (mergeOverwrite $user $own) -}}
{{- end -}}

{{/* server.shutdownTimeout in whole seconds, for the pod's grace period: the chart's one
statement of it is shop.config.server.shutdownTimeout, in seconds ("15s") or minutes ("1m"). */}}
{{- define "seckill.shutdownSeconds" -}}
{{- $d := toString (required "shop.config.server.shutdownTimeout: the pod's grace period follows it" (dig "server" "shutdownTimeout" "" .Values.shop.config)) -}}
{{- if regexMatch "^[0-9]+s$" $d -}}
{{- trimSuffix "s" $d | atoi -}}
{{- else if regexMatch "^[0-9]+m$" $d -}}
{{- mul (trimSuffix "m" $d | atoi) 60 -}}
{{- else -}}
{{- fail (printf "shop.config.server.shutdownTimeout %q: give it in whole seconds (\"15s\") or minutes (\"1m\"), for the pod's grace period" $d) -}}
{{- end -}}
{{- end -}}

{{/* The migration's config.yaml: the shop's without what the migration neither needs nor is given
the secrets of (ZooKeeper's identity, the buyers' token keys). */}}
{{- define "seckill.migrateConfig" -}}
{{- $c := include "seckill.config" . | fromYaml -}}
{{- $_ := unset $c "auth" -}}
{{- if hasKey $c "zookeeper" -}}
{{- $_ := unset $c.zookeeper "auth" -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* The keys of the Secret a pod mounts: only those its container reads. */}}
{{- define "seckill.secretItems" -}}
{{- $keys := list "mysql-password" -}}
{{- if .root.Values.mysqlTLS -}}{{- $keys = append $keys "mysql-ca.pem" -}}{{- end -}}
{{- if not .migration -}}
{{- if .root.Values.zookeeperAuth -}}{{- $keys = append $keys "zookeeper-auth" -}}{{- end -}}
{{- if eq .root.Values.auth.mode "jwt" -}}
{{- $keys = append $keys (ternary "jwt-public-key" "jwt-hmac-secret" (eq .root.Values.auth.jwtAlgorithm "rs256")) -}}
{{- end -}}
{{- end -}}
{{- range $keys }}
- {key: {{ . }}, path: {{ . }}}
{{- end -}}
{{- end -}}

{{/* pods' common security: not root, no privilege, nothing added */}}
{{- define "seckill.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end -}}
