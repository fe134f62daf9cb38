package policy

// noFollow is nothing on Windows, which has no O_NOFOLLOW: isGenerated
// follows a final link there and judges the file it leads to, where on
// Unix the open fails and the link is treated as generated (refused).
const noFollow = 0
