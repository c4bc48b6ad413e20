// The reader's time zone, for the pages' times: the browser's IANA name in the `baton_tz` cookie,
// which the server reads on the next page (web/zones.py). Without it, times are in UTC.
(function () {
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  if (!zone || !/^[A-Za-z0-9_+\-\/]{1,64}$/.test(zone)) return;  // IANA names need no quoting
  var cookie = "baton_tz=" + zone;
  if (document.cookie.split("; ").indexOf(cookie) === -1) {
    document.cookie = cookie + "; path=/; max-age=31536000; samesite=lax";
  }
})();
