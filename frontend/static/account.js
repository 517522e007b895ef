// The API token this browser signed in with. Pages have no server session (the API's tokens are
// the only identity), so the token is kept in localStorage, sent as a Bearer header by the pages
// that act for its owner, and forgotten on "Sign out". The pages' policy runs only their own
// modules and draw data as text, which is what keeps a stored token from other scripts.

const KEY = "arena.token";

/** The token this browser keeps, or null when signed out. */
export function savedToken() {
  return localStorage.getItem(KEY);
}

export function saveToken(token) {
  localStorage.setItem(KEY, token);
}

export function forgetToken() {
  localStorage.removeItem(KEY);
}

/** The header's link to "My bots" reads "Sign in" while this browser keeps no token. */
export function labelAccountLink() {
  const link = document.getElementById("nav-me");
  if (link) link.textContent = savedToken() ? "My bots" : "Sign in";
}
