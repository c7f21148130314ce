# shellcheck shell=bash
# Case catalog of bench/run.sh (sourced): osbq, nginx and bare libmicrohttpd serving the same
# bytes.

start_nginx() { # $1 port, $2 directory holding www/v2/catalog
  local dir=$2
  mkdir -p "$dir/logs"
  # The worker processes run as the user running this script, so they can read its temp dir;
  # two of them, like the gateway's two HTTP threads; no access log, like OSBQ_LOG_LEVEL=warn.
  cat >"$dir/nginx.conf" <<CONF
daemon off;
worker_processes 2;
$([ "$(id -u)" -eq 0 ] && echo "user root;")
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; use epoll; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $dir/tmp-body;
  proxy_temp_path $dir/tmp-proxy;
  fastcgi_temp_path $dir/tmp-fastcgi;
  uwsgi_temp_path $dir/tmp-uwsgi;
  scgi_temp_path $dir/tmp-scgi;
  server {
    listen 127.0.0.1:$1;
    location / { types { } default_type application/json; root $dir/www; }
  }
}
CONF
  start_process "$dir/nginx.out" nginx -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf"
}

case_catalog() {
  echo "== 1 catalog: GET /v2/catalog (auth + version header), osbq vs nginx vs bare libmicrohttpd"
  start_stack catalog --no-worker
  local body="$stack_dir/www/v2/catalog" code
  mkdir -p "${body%/*}"
  code=$(broker_curl "$base_url/v2/catalog") || true
  [ "$code" = 200 ] || stack_die "catalog: HTTP $code"
  cp "$stack_dir/last" "$body"
  local nginx_port bare_port
  nginx_port=$(free_port)
  start_nginx "$nginx_port" "$stack_dir"
  bare_port=$(free_port)
  start_process "$stack_dir/bare.out" "$bare_bin" "$bare_port" "$body"
  local url
  for url in "http://127.0.0.1:$nginx_port" "http://127.0.0.1:$bare_port"; do
    wait_until 10 curl -fsS --max-time 1 -o "$stack_dir/ref" "$url/v2/catalog" ||
      stack_die "no answer from the reference at $url"
    cmp -s "$body" "$stack_dir/ref" || die "the reference at $url serves other bytes than osbq"
  done
  echo "  the same $(wc -c <"$body") bytes from osbq, nginx ($nginx_port) and bare_mhd ($bare_port)"
  local osbq_url=$base_url run label
  for ((run = 1; run <= runs; run++)); do
    # Side by side: each run measures the three servers one after the other.
    for label in osbq nginx bare; do
      case $label in
        osbq) base_url=$osbq_url ;;
        nginx) base_url="http://127.0.0.1:$nginx_port" ;;
        bare) base_url="http://127.0.0.1:$bare_port" ;;
      esac
      [ "$run" = 1 ] && warm_up catalog.lua
      wrk_command catalog.lua "$duration"
      local case_name=catalog
      [ "$label" = osbq ] || case_name="catalog_$label"
      label=$label measure_wrk "$case_name" "$run" req/s "${wrk_cmd[@]}"
    done
  done
  base_url=$osbq_url
  stop_stack
}

