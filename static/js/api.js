// The site's JSON API from the browser: the session's CSRF token, and errors turned into one message
// (the API's {"error": {"message", "fields"}} shape) that pages can show as they are.
(function () {
  "use strict";

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  function csrf() {
    const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function call(method, url, body, extra) {
    const response = await fetch(url, Object.assign({
      method: method,
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf(), Accept: "application/json" },
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    }, extra || {}));
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = data.error || {};
      const fields = error.fields ? Object.values(error.fields).flat().join(" ") : "";
      throw new ApiError(fields || error.message || response.statusText, response.status);
    }
    return data;
  }

  window.faultlineApi = { ApiError: ApiError, csrf: csrf, call: call };
})();
