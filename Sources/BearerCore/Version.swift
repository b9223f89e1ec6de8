/// The version `--version` prints, `/status` shows and the `User-Agent` of the proxy's own calls names.
package let bearerProxyVersion = "0.1.0"
