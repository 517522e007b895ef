// Every page of the site: the header's account link says whether this browser is signed in.

import { labelAccountLink } from "./account.js";

labelAccountLink();
