// The image a container app runs now, read before apps.bicep updates it, so `azd provision`
// keeps the image `azd deploy` put there (azd's image-based strategy). Empty: no app yet.
param exists bool
param name string

resource app 'Microsoft.App/containerApps@2024-03-01' existing = if (exists) {
  name: name
}

output image string = exists ? app.properties.template.containers[0].image : ''
